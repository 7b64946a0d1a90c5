"""HPC batch models: strict FIFO and EASY backfill."""
