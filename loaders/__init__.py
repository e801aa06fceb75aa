"""The three-tier loader: `from loaders import ShardLoader`."""

__all__ = ["ShardLoader"]


def __getattr__(name: str):
    # Lazy, so that the L3 worker processes (spawned; they import loaders.fetch_workers) start
    # without importing torch.
    if name == "ShardLoader":
        from loaders.shard_loader import ShardLoader

        return ShardLoader
    raise AttributeError(name)
