"""Drivers: the one seam between Sova and a data center (``observe`` and ``apply``)."""
