"""Diagnostics that explain a number: TIDE errors, confusion matrix, PR curves, per-image counts."""
