"""Amazon Web Services: EC2 instances, Elastic Fabric Adapter, placement groups and Capacity Blocks."""
