"""losses.py - remat's two losses on a network output [T, N, classes] (docs/determinism.md).

    rate = out.mean(0)
    rate_mse: mean over N and classes of (rate - onehot(label))^2  (SpikingJelly's usual recipe)
    rate_ce:  cross_entropy(rate, label), mean over N
"""
import torch
import torch.nn.functional as F


def rate_loss(out: torch.Tensor, labels: torch.Tensor, kind: str = "rate_mse") -> torch.Tensor:
    """The loss remat's model file names (``loss``) for an output ``[T, N, classes]``.

    Example::

        >>> loss = rate_loss(net(x), labels, "rate_ce")
    """
    rate = out.mean(0)
    if kind == "rate_ce":
        return F.cross_entropy(rate, labels)
    if kind == "rate_mse":
        return F.mse_loss(rate, F.one_hot(labels.long(), rate.shape[-1]).to(rate.dtype))
    raise ValueError("loss: expected rate_mse or rate_ce, got %r" % kind)
