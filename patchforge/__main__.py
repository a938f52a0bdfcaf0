"""`python -m patchforge` runs the command line."""
from patchforge.cli import main

main()
