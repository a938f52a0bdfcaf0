"""patchforge.store"""
