"""The SDK's version (one version for engine, protocol and SDKs: tools/dist/version.py)."""

__version__ = "0.1.0"
