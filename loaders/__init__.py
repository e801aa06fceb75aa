"""The three-tier loader: `from loaders import ShardLoader`."""

from loaders.shard_loader import ShardLoader

__all__ = ["ShardLoader"]
