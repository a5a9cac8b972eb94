"""Sources: each cloud (fetch + normalize) and saved inventories, all ending in `model.Inventory`."""
