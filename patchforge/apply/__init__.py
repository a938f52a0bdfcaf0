"""patchforge.apply"""
