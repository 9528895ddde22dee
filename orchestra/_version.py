"""The package version, in a module of its own so that parts of the package (tracing
names its tracer with it) read it without importing the whole public face."""

__version__ = "0.1.0"
