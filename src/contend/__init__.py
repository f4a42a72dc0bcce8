"""contend: container isolation measurement and protection."""
__version__ = "0.1.0"
