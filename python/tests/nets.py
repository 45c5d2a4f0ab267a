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


def options_2d(classes: int = 10, seed: int = 2) -> nn.Module:
    """SpikingJelly layer.* with the conv and pooling options remat maps: a depthwise conv with padding='same',
    batch norm with its own momentum and eps, a grouped and dilated conv, max pooling with ceil_mode, a
    depthwise conv with padding='valid', average pooling with ceil_mode (adding no window), an exact
    AdaptiveAvgPool2d. Input [2, 16, 16]."""
    functional, layer, neuron, surrogate = sj()
    torch.manual_seed(seed)
    net = nn.Sequential(
        layer.Conv2d(2, 4, 3, padding="same", groups=2), layer.BatchNorm2d(4, momentum=0.2, eps=1e-3),
        neuron.LIFNode(surrogate_function=surrogate.ATan()),
        layer.Conv2d(4, 8, 3, padding="same", dilation=2, groups=2), neuron.IFNode(surrogate_function=surrogate.ATan()),
        layer.MaxPool2d(3, 2, ceil_mode=True),                       # 16 -> 8 (floor: 7)
        layer.Conv2d(8, 8, 3, padding="valid", groups=8, bias=False), layer.BatchNorm2d(8),
        neuron.IFNode(surrogate_function=surrogate.ATan()),
        layer.AvgPool2d(2, ceil_mode=True),                          # 6 -> 3
        layer.AdaptiveAvgPool2d((1, 1)),
        layer.Flatten(), layer.Linear(8, classes), neuron.LIFNode(surrogate_function=surrogate.ATan()))
    functional.set_step_mode(net, "m")
    return net


def audio_1d(classes: int = 5, seed: int = 3) -> nn.Module:
    """An audio SNN on [C, L] (SHD-like) from SpikingJelly's 1-d layer.*: a depthwise dilated Conv1d with
    padding='same', BatchNorm1d, MaxPool1d with ceil_mode, a grouped Conv1d, AvgPool1d. Input [4, 32]."""
    functional, layer, neuron, surrogate = sj()
    torch.manual_seed(seed)
    net = nn.Sequential(
        layer.Conv1d(4, 8, 5, padding="same", dilation=2, groups=4), layer.BatchNorm1d(8),
        neuron.LIFNode(surrogate_function=surrogate.ATan()),
        layer.MaxPool1d(3, 2, ceil_mode=True),                       # 32 -> 16 (floor: 15)
        layer.Conv1d(8, 8, 3, padding=1, groups=2, bias=False), neuron.IFNode(surrogate_function=surrogate.ATan()),
        layer.AvgPool1d(2),
        layer.Flatten(), layer.Linear(8 * 8, classes), neuron.LIFNode(surrogate_function=surrogate.ATan()))
    functional.set_step_mode(net, "m")
    return net
