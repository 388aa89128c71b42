# health_pb2_grpc.py imports "health_pb2" as a top-level module; inside our package it must be
# relative. Copies SRC/*.py to DST with that one import rewritten, plus an __init__.py.
file(READ ${SRC}/health_pb2_grpc.py grpc_py)
string(REPLACE "import health_pb2 as" "from . import health_pb2 as" grpc_py "${grpc_py}")
file(WRITE ${DST}/health_pb2_grpc.py "${grpc_py}")
file(COPY ${SRC}/health_pb2.py DESTINATION ${DST})
file(WRITE ${DST}/__init__.py "")
