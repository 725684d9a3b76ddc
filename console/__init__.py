"""The staff console's room: its admin site and refusal page, the tenant wall every page is
built behind, names for ids, capped lists, charts, template tags and date formats, and the
pages of the base app's own rows (tenants, keys, agents, runs)."""
