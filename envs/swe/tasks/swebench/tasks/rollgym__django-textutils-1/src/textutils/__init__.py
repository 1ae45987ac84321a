"""Text helpers for Django projects: plain functions (`textutils.text`) and template filters
(`{% load textutils %}`)."""

__version__ = "0.3.0"
