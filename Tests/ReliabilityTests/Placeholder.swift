// Replaced by the reliability tests.
