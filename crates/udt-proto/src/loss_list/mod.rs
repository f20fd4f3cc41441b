//! Loss lists (placeholder; being written).
