"""`streams console`: a web console for the cluster, Connect and the apps.

It is a client like any other (aiokafka admin requests, Connect's REST API) and imports no
broker or runtime internals.
"""
