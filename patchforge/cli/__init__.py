"""patchforge.cli"""
