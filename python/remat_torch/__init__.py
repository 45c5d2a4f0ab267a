"""remat_torch - the bridge between PyTorch / SpikingJelly modules and remat.

Talks to remat through its files: a model file (JSON), weights (HDF5), plan files,
gradient dumps and traces (docs/pytorch.md).

    import remat_torch
    model = remat_torch.to_model(net, input_shape=(3, 32, 32), T=4, N=8)  # -> dict (a model file)
    remat_torch.save_weights(net, model, "w.h5")                          # for remat run --init
    wrapped = remat_torch.apply_plan(net, model, "plan.json")             # nn.Module running the plan
    remat_torch.dump_step(net, x, labels, "d.h5", loss="rate_mse")        # a gradient dump
    remat_torch.record(net, x, labels, out="step.h5", steps=2)            # a PyTorch trace

Depends on torch and h5py only; SpikingJelly is needed only by models that use it.
"""
from remat_torch.importer import model_text, to_model
from remat_torch.weights import save_weights

__version__ = "0.1.0"
__all__ = ["to_model", "save_weights", "apply_plan", "dump_step", "record", "model_text", "write_model"]


def write_model(model, path: str) -> None:
    """Writes a model dict from ``to_model`` as a model file (atomically)."""
    from remat_torch._atomic import write_text

    write_text(path, model_text(model))


def __getattr__(name):  # the heavier parts load on first use
    if name == "apply_plan":
        from remat_torch.apply import apply_plan
        return apply_plan
    if name == "dump_step":
        from remat_torch.dump import dump_step
        return dump_step
    if name == "record":
        from remat_torch.record import record
        return record
    raise AttributeError("module 'remat_torch' has no attribute %r" % name)
