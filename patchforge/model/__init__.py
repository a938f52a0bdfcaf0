"""patchforge.model"""
