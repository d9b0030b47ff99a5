"""Placement-era requests: resource classes, traits, request groups.

``request`` holds the request model; the parsing of a flavor and an image
into it, the name rules and the allocation candidates over the host
table's columns live beside it.
"""
