"""`python -m patchforge` runs the command line."""
from patchforge.cli import console_main

console_main()
