"""One package per cloud: collection, normalization, derived facts and grouping signals."""
