"""Reliability and security cases (issue 15): each fault measured, its outcome asserted."""
