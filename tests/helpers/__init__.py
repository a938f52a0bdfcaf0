"""What the tests share, in one place: the isolated environment (`env`), git and real upstream
repositories (`git`, `upstream`), a patchforge project built through the CLI (`project`), the one
CLI runner (`cli`), tree snapshots (`snapshot`), golden files (`golden`), the HTTP servers
standing for a forge and a registry (`servers`) and the deployment tools and stacks (`deploy`).

Test modules import from here, never from each other, so each module is loaded once.
"""
