"""python3 -m remat_torch import|apply|record ... (docs/pytorch.md)."""
import sys

USAGE = """usage: python3 -m remat_torch COMMAND ...

  import   a module (from a factory) -> a remat model file (+ weights for remat run --init)
  apply    one training step of the module under a remat plan, checked bit for bit against its plain step
  record   the module's real training steps -> a remat trace

python3 -m remat_torch COMMAND --help for each."""


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if argv else 2
    cmd, rest = argv[0], argv[1:]
    if cmd == "import":
        from remat_torch.cli_import import main as run
    elif cmd == "apply":
        from remat_torch.cli_apply import main as run
    elif cmd == "record":
        from remat_torch.record import main as run
    else:
        print("remat_torch: unknown command %r (expected import, apply or record)" % cmd, file=sys.stderr)
        return 2
    return run(rest)


if __name__ == "__main__":
    sys.exit(main())
