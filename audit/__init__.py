"""Auditing a call from its Temporal history alone: export it as a bundle, read it as a
timeline report, and (in `audit.verify`) check that it followed its rules.

Nothing here queries a workflow or needs a worker: every fact comes from history events.
"""
