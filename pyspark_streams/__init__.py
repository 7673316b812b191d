"""Makes ``format("streams")`` work in Spark without a ``spark.dataSource.register`` call.

PySpark (4.0+) imports every top-level module named ``pyspark_<name>`` it finds on the Python
path and registers its ``DefaultSource``; installing the ``streams`` package (with its ``spark``
extra) is thus all a Spark job needs. The source itself is :mod:`streams.spark.source`.
"""

from streams.spark.source import StreamsDataSource as DefaultSource

__all__ = ["DefaultSource"]
