"""What the model may see and call: the gate, the meta-tools and the Tier-1 prompt."""
