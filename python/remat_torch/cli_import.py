"""python3 -m remat_torch import: a module -> a remat model file (+ weights)."""
import argparse
import sys

from remat_torch import cli_common


def main(argv) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m remat_torch import",
                                 description="Writes the remat model file of a PyTorch / SpikingJelly module built "
                                             "by a factory (and, with --weights, its parameters for remat run "
                                             "--init).")
    cli_common.add_factory_args(ap)
    ap.add_argument("--input-shape", required=True, type=cli_common.shape_arg, metavar="C,H,W",
                    help="one sample's shape (C,H,W, C,L or FEATURES)")
    ap.add_argument("--T", type=int, required=True, help="time steps")
    ap.add_argument("--N", type=int, required=True, help="batch size")
    ap.add_argument("--input-kind", choices=["analog", "spikes"], default="analog")
    ap.add_argument("--loss", choices=["rate_mse", "rate_ce"], default="rate_mse")
    ap.add_argument("--optimizer", choices=["sgd", "adam"], help="default: remat's (SGD, lr 0.1, momentum 0.9)")
    ap.add_argument("--lr", type=float)
    ap.add_argument("--momentum", type=float, help="SGD momentum")
    ap.add_argument("--blocks", choices=["auto", "top", "residual", "layer"], default="auto",
                    help="how layers are grouped into blocks, the units a plan names (default auto)")
    ap.add_argument("--name", help="the model's name (default: the factory's)")
    ap.add_argument("--out", required=True, help="the model file to write (JSON)")
    ap.add_argument("--weights", help="also write the module's parameters (HDF5) for remat run --init")
    a = ap.parse_args(argv)
    import remat_torch

    try:
        if a.T < 1 or a.N < 1:
            raise ValueError("--T, --N: expected positive integers, got %d, %d" % (a.T, a.N))
        opt = None
        if a.optimizer:
            opt = {"type": a.optimizer}
            if a.lr is not None:
                opt["lr"] = a.lr
            if a.momentum is not None:
                if a.optimizer != "sgd":
                    raise ValueError("--momentum: only with --optimizer sgd")
                opt["momentum"] = a.momentum
        elif a.lr is not None or a.momentum is not None:
            raise ValueError("--lr, --momentum: need --optimizer")
        net = cli_common.build(a)
        model = remat_torch.to_model(net, a.input_shape, a.T, a.N, name=a.name or a.factory.rsplit(":", 1)[-1],
                                     loss=a.loss, optimizer=opt, blocks=a.blocks, input_kind=a.input_kind)
        remat_torch.write_model(model, a.out)
        if a.weights:
            remat_torch.save_weights(net, model, a.weights)
    except (ValueError, ImportError, AttributeError, TypeError) as e:
        return cli_common.fail("import", e)
    except RuntimeError as e:  # the module's own forward refused the example input
        return cli_common.fail("import", "--input-shape %s: the module's forward on a [2, 3, %s] input failed: %s"
                               % (",".join(map(str, a.input_shape)), ", ".join(map(str, a.input_shape)),
                                  str(e).splitlines()[0]))
    print("model %s: %d layers in %d blocks (%s), written to %s" % (model["name"], len(model["layers"]),
                                                                      len(model["blocks"]),
                                                                      ", ".join(b["name"] for b in model["blocks"]),
                                                                      a.out))
    if a.weights:
        print("weights written to %s" % a.weights)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
