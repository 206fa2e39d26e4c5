// Replaced by the deployment tests.
