"""Microsoft Azure: VM sizes, InfiniBand, scale sets, availability sets and proximity placement groups."""
