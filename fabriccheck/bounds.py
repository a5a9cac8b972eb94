"""The largest number each user-given count or price may take: past these a number is a typo (a price of 1e300, a
cluster of 10^11 nodes), and the figures computed from it would be as meaningless, so it is refused with one line.
Each bound is far above anything real, so no real input is refused."""

from __future__ import annotations

# Dollars per GPU-hour. An H100 rents for about $5 to $12 a GPU-hour: p5.48xlarge (8 H100) in an EC2 Capacity Block
# at $4.916 per accelerator-hour (aws.amazon.com/ec2/capacityblocks/pricing), on demand at $98.32 an instance-hour
# (The Next Platform, "H100 GPU Instance Pricing On AWS", 2023-07-27). A thousand dollars is eighty times that.
MAX_PRICE_PER_GPU_HOUR = 1_000.0
# Nodes in one cluster. The largest training clusters reported hold about 100,000 GPUs (xAI's 100,000 H100; the
# SemiAnalysis report "100,000 H100 Clusters", 2024), 12,500 nodes of 8 GPUs: this is eight times that.
MAX_NODES = 100_000
