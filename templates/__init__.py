"""The CUDA templates and headers, installed as the package kgen.templates: a regular package, so
importlib.resources gives their folder as a path that Jinja's FileSystemLoader can read."""
