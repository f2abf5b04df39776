"""JSON views: the one place where chain objects become JSON-ready Python values.

RPC methods and REST handlers both build their replies from these functions, so
a field name, a field order or a number format is decided once (doc/views.md).
Every view returns plain dicts and lists whose insertion order is the output key
order; amounts and reals are Decimal subclasses that simplejson (``use_decimal``)
prints exactly as Core does.
"""
