"""One agent executing one task: tool loop, journaled steps, compaction, approvals."""
