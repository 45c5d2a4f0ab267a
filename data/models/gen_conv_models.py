#!/usr/bin/env python3
"""Writes the convolutional model files of data/models/ (run from the repository root:
python3 data/models/gen_conv_models.py). The files are committed; this script says how
they were made: Spiking VGG for CIFAR10-DVS and SEW-ResNet-18/34 (ADD) as SpikingJelly
builds them, each with a tiny- variant for tests."""
import json

LIF_VGG = {"type": "lif", "tau": 1.333, "decay_input": False, "detach_reset": True, "surrogate": "atan"}
IF_SEW = {"type": "if", "detach_reset": True, "surrogate": "atan"}


def write(path, model):
    with open(path, "w") as f:
        f.write(json.dumps(model, indent=1) + "\n")


def vgg(name, desc, T, N, hw, channels, pools, classes, dropout=0.25):
    layers, blocks, c_in = [], [], 2
    for i, c in enumerate(channels, 1):
        names = [f"c{i}", f"bn{i}", f"sn{i}"]
        layers += [{"name": f"c{i}", "type": "conv2d", "in": c_in, "out": c, "kernel": 3, "padding": 1},
                   {"name": f"bn{i}", "type": "batchnorm"}, dict(name=f"sn{i}", **LIF_VGG)]
        if i in pools:
            layers.append({"name": f"pool{i}", "type": "avgpool2d", "kernel": 2})
            names.append(f"pool{i}")
        blocks.append({"name": f"b{i}", "layers": names})
        c_in = c
    layers += [{"name": "flat", "type": "flatten"}, {"name": "drop", "type": "dropout", "p": dropout},
               {"name": "fc", "type": "linear", "out": classes}, dict(name="sn_out", **LIF_VGG)]
    blocks.append({"name": "head", "layers": ["flat", "drop", "fc", "sn_out"]})
    return {"name": name, "description": desc, "T": T, "N": N,
            "input": {"shape": [2, hw, hw], "kind": "spikes", "rate": 0.2}, "classes": classes,
            "loss": "rate_mse", "init_gain": 6, "optimizer": {"type": "sgd", "lr": 0.1, "momentum": 0.9},
            "layers": layers, "blocks": blocks}


def sew(name, desc, T, N, hw, counts, widths, classes, imagenet):
    layers, blocks = [], []

    def conv(n, cin, cout, k, s, p, **kw):
        d = {"name": n, "type": "conv2d", "in": cin, "out": cout, "kernel": k, "stride": s, "padding": p,
             "bias": False}
        d.update(kw)
        return d

    if imagenet:
        stem = [conv("conv1", 3, widths[0], 7, 2, 3), {"name": "bn1", "type": "batchnorm"},
                dict(name="sn1", **IF_SEW), {"name": "maxpool", "type": "maxpool2d", "kernel": 3, "stride": 2,
                                             "padding": 1}]
    else:
        stem = [conv("conv1", 3, widths[0], 3, 1, 1), {"name": "bn1", "type": "batchnorm"},
                dict(name="sn1", **IF_SEW)]
    layers += stem
    blocks.append({"name": "stem", "layers": [l["name"] for l in stem]})
    prev, c_in = stem[-1]["name"], widths[0]
    for li, (count, width) in enumerate(zip(counts, widths), 1):
        for bi in range(count):
            stride = 2 if (li > 1 and bi == 0) else 1
            p = f"l{li}b{bi}_"
            blk = [conv(p + "conv1", c_in, width, 3, stride, 1), {"name": p + "bn1", "type": "batchnorm"},
                   dict(name=p + "sn1", **IF_SEW), conv(p + "conv2", width, width, 3, 1, 1),
                   {"name": p + "bn2", "type": "batchnorm"}, dict(name=p + "sn2", **IF_SEW)]
            if stride != 1 or c_in != width:
                blk += [conv(p + "down_conv", c_in, width, 1, stride, 0, input=prev),
                        {"name": p + "down_bn", "type": "batchnorm"}, dict(name=p + "down_sn", **IF_SEW),
                        {"name": p + "add", "type": "add", "from": p + "sn2"}]
            else:
                blk.append({"name": p + "add", "type": "add"})
            layers += blk
            blocks.append({"name": f"l{li}b{bi}", "layers": [l["name"] for l in blk]})
            prev, c_in = p + "add", width
    final = (hw // 4 if imagenet else hw) // 2 ** (len(counts) - 1)
    head = [{"name": "avgpool", "type": "avgpool2d", "kernel": final}, {"name": "flat", "type": "flatten"},
            {"name": "fc", "type": "linear", "out": classes}]
    layers += head
    blocks.append({"name": "head", "layers": [l["name"] for l in head]})
    return {"name": name, "description": desc, "T": T, "N": N, "input": {"shape": [3, hw, hw], "kind": "analog"},
            "classes": classes, "loss": "rate_ce", "init_gain": 2,
            "optimizer": {"type": "sgd", "lr": 0.1, "momentum": 0.9}, "layers": layers, "blocks": blocks}


d = "data/models/"
write(d + "vgg-dvs.json", vgg("vgg-dvs", "Spiking VGG for CIFAR10-DVS as in SpikingJelly's memory-optimisation "
      "tutorial: [2, 48, 48] event frames, T=10, batch 32; 8 conv3x3-BN-LIF blocks (64, 128, 256, 256, 512, 512, "
      "512, 512), avgpool 2 after blocks 2, 4, 6, 8; dropout 0.25; linear 4608 -> 10.",
      10, 32, 48, [64, 128, 256, 256, 512, 512, 512, 512], {2, 4, 6, 8}, 10))
write(d + "tiny-vgg-dvs.json", vgg("tiny-vgg-dvs", "Small variant of vgg-dvs for tests: [2, 8, 8] input, T=4, "
      "N=2, channels 4, 6, 8, avgpool after blocks 2 and 3.", 4, 2, 8, [4, 6, 8], {2, 3}, 10))
write(d + "sew-resnet18.json", sew("sew-resnet18", "SEW-ResNet-18 (ADD) for ImageNet as SpikingJelly's "
      "sew_resnet18: 3 x 224 x 224 image repeated over T=4, batch 32, IF neurons (ATan, detach_reset).",
      4, 32, 224, [2, 2, 2, 2], [64, 128, 256, 512], 1000, True))
write(d + "sew-resnet34.json", sew("sew-resnet34", "SEW-ResNet-34 (ADD) for ImageNet as SpikingJelly's "
      "sew_resnet34: 3 x 224 x 224 image repeated over T=4, batch 32, IF neurons (ATan, detach_reset).",
      4, 32, 224, [3, 4, 6, 3], [64, 128, 256, 512], 1000, True))
write(d + "sew-resnet18-cifar.json", sew("sew-resnet18-cifar", "SEW-ResNet-18 (ADD) at 32 x 32 input (3x3 stem, "
      "no max pooling), 10 classes, T=4, batch 32.", 4, 32, 32, [2, 2, 2, 2], [64, 128, 256, 512], 10, False))
write(d + "tiny-sew-resnet.json", sew("tiny-sew-resnet", "Small variant of sew-resnet18 for tests: 3 x 32 x 32 "
      "input, 7x7 stride-2 stem and max pooling, two stages of one block (the second with a downsample branch), "
      "widths 4 and 6, T=2, N=2.", 2, 2, 32, [1, 1], [4, 6], 5, True))
