#!/usr/bin/env python3
"""exp4_pytorch_conv.py - section 4's comparison with PyTorch on the convolutional SNNs
(the Spiking VGG at N=2, SEW-ResNet-18 at N=1: batches this 2-core CPU runs in seconds).

  python3 bench/exp4_pytorch_conv.py [--quick] [--rounds R] [--threads N]
"""
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
args = [a for a in sys.argv[1:]]
if "-h" in args or "--help" in args:
    print(__doc__.strip() + "\n\nEvery other option is exp4_pytorch.py's (python3 bench/exp4_pytorch.py --help).")
    sys.exit(0)
if "--rounds" not in args:
    args += ["--rounds", "2"]
os.execv(sys.executable, [sys.executable, os.path.join(here, "exp4_pytorch.py"), "--models",
                          "vgg-dvs:2,sew-resnet18:1", "--save", "exp4_pytorch_conv"] + args)
