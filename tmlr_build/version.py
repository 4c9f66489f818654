"""The tmlr version: a leaf module, so that either side of a build can name it without the package's API."""
__version__ = "0.1.0"
