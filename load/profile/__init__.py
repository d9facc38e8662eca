"""Profiles of a deployment's processes under B2 and B3 (``python -m load.profile``):
py-spy samples the coordinators, the workers and the gateway during each measured window
(``load.window``), and the collapsed stacks it records become tables of the top frames
(self and inclusive time) and flamegraphs.

Modules: ``cli`` (command line, the run), ``sampler`` (py-spy processes around a
window), ``stacks`` (collapsed stacks to self/inclusive tables), ``flamegraph`` (an SVG of
collapsed stacks), ``report`` (the Markdown report and the summary printed).
"""
