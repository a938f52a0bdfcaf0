"""`python -m patchforge` runs the command line."""
import gc

gc.set_threshold(200_000, 10, 10)  # before the imports: cli.fewer_collections says why

from patchforge.cli import console_main  # noqa: E402

console_main()
