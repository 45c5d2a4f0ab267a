"""nets.py - the test networks of the bridge tests (importable as factories: --factory nets:vgg_lif)."""
import torch
import torch.nn as nn


def sj():
    from spikingjelly.activation_based import functional, layer, neuron, surrogate
    return functional, layer, neuron, surrogate


def vgg_lif(channels: int = 8, classes: int = 10, dropout: float = 0.25, seed: int = 0) -> nn.Module:
    """A Spiking VGG written from SpikingJelly's layer.* modules and LIFNode (the shipped spiking_vgg* end in
    an upsampling AdaptiveAvgPool2d((7, 7)) below 224 x 224): [conv, BN, LIF] blocks, a block without batch norm
    (time chunks apply), a SeqToANNContainer, soft reset, average and max pooling, a multi-step dropout, a linear
    head with a LIF readout. Input [2, 16, 16]."""
    functional, layer, neuron, surrogate = sj()
    torch.manual_seed(seed)
    c = channels

    def lif(**kw):
        kw.setdefault("surrogate_function", surrogate.ATan())
        return neuron.LIFNode(**kw)

    net = nn.Sequential(
        layer.Conv2d(2, c, 3, padding=1), layer.BatchNorm2d(c), lif(tau=2.0),
        layer.Conv2d(c, c, 3, padding=1), lif(tau=4.0 / 3.0, decay_input=False, detach_reset=True),
        layer.AvgPool2d(2),
        layer.SeqToANNContainer(nn.Conv2d(c, 2 * c, 3, padding=1, bias=False), nn.BatchNorm2d(2 * c)),
        neuron.LIFNode(v_reset=None, surrogate_function=surrogate.Sigmoid(alpha=3.0)),
        layer.MaxPool2d(2),
        layer.Flatten(), layer.Dropout(dropout), layer.Linear(2 * c * 4 * 4, classes),
        lif(tau=4.0 / 3.0, decay_input=False, detach_reset=True))
    functional.set_step_mode(net, "m")
    return net


def sew_resnet18(classes: int = 10, seed: int = 1) -> nn.Module:
    """SpikingJelly's own sew_resnet18 (IFNode, ADD, ATan, detach_reset) in multi-step mode."""
    functional, layer, neuron, surrogate = sj()
    torch.manual_seed(seed)
    from spikingjelly.activation_based.model import sew_resnet
    net = sew_resnet.sew_resnet18(spiking_neuron=neuron.IFNode, cnf="ADD", num_classes=classes,
                                  surrogate_function=surrogate.ATan(), detach_reset=True)
    functional.set_step_mode(net, "m")
    return net
