"""patchforge.formats"""
