"""``make compat TORCH=<version>``: the pack run on another PyTorch release, notebook by notebook (see ``__main__``)."""
