// placeholder, replaced as the target grows
