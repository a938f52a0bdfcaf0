"""`python -m patchforge` runs the command line."""
import gc

from patchforge import COLLECT_AFTER

gc.set_threshold(COLLECT_AFTER, 10, 10)  # before the imports: cli.fewer_collections says why

from patchforge.cli import console_main  # noqa: E402

console_main()
