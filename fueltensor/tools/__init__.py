"""What people look at: backend comparison, the judge's audit, the tour, the text/HTML displays."""
