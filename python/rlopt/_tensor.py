"""_tensor.py - the few protobuf messages rlopt's Python side needs, by hand.

`rlopt run` reads and writes ONNX TensorProto files, and run() needs the
names of a model's graph inputs in order. Both are small corners of the
protobuf wire format (varints and length-delimited fields), so they are
read and written here and the package depends on numpy only; onnx is needed
only to pass an in-memory ModelProto, which the caller already has.

Field numbers are those of onnx.proto: TensorProto dims=1, data_type=2,
float_data=4, int32_data=5, int64_data=7, name=8, raw_data=9, double_data=10,
uint64_data=11; ModelProto graph=7; GraphProto initializer=5, input=11;
ValueInfoProto name=1.
"""

import struct

import numpy as np

# ONNX TensorProto.DataType -> numpy dtype (bfloat16 travels as its bits)
ONNX_TO_NUMPY = {
    1: np.float32, 2: np.uint8, 3: np.int8, 4: np.uint16, 5: np.int16,
    6: np.int32, 7: np.int64, 9: np.bool_, 10: np.float16, 11: np.float64,
    12: np.uint32, 13: np.uint64, 16: np.uint16,
}
NUMPY_TO_ONNX = {
    np.dtype(np.float32): 1, np.dtype(np.uint8): 2, np.dtype(np.int8): 3,
    np.dtype(np.uint16): 4, np.dtype(np.int16): 5, np.dtype(np.int32): 6,
    np.dtype(np.int64): 7, np.dtype(np.bool_): 9, np.dtype(np.float16): 10,
    np.dtype(np.float64): 11, np.dtype(np.uint32): 12, np.dtype(np.uint64): 13,
}


class WireError(ValueError):
    """A file that is not the protobuf message it should be."""


def _varint(buf, pos):
    shift = result = 0
    while True:
        if pos >= len(buf):
            raise WireError("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise WireError("varint too long")


def _fields(buf):
    """Yield (field number, wire type, value) over one message; a
    length-delimited value is a memoryview slice, never a copy."""
    buf = memoryview(buf)
    pos, n = 0, len(buf)
    while pos < n:
        key, pos = _varint(buf, pos)
        field, wt = key >> 3, key & 7
        if wt == 0:
            val, pos = _varint(buf, pos)
        elif wt == 1:
            if pos + 8 > n:
                raise WireError("truncated fixed64")
            val, pos = buf[pos:pos + 8], pos + 8
        elif wt == 2:
            ln, pos = _varint(buf, pos)
            if pos + ln > n:
                raise WireError("truncated field %d" % field)
            val, pos = buf[pos:pos + ln], pos + ln
        elif wt == 5:
            if pos + 4 > n:
                raise WireError("truncated fixed32")
            val, pos = buf[pos:pos + 4], pos + 4
        else:
            raise WireError("unsupported wire type %d" % wt)
        yield field, wt, val


def _enc_varint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _enc_len(field, payload):
    return _enc_varint(field << 3 | 2) + _enc_varint(len(payload)) + payload


def encode_tensor(name, array):
    """A TensorProto with dims, data_type, name and little-endian raw_data."""
    a = np.asarray(array)
    dt = NUMPY_TO_ONNX.get(a.dtype.newbyteorder("="))
    if dt is None:
        raise ValueError("input '%s': dtype %s has no ONNX equivalent rlopt reads" % (name, a.dtype))
    a = np.asarray(a, dtype=a.dtype.newbyteorder("<"), order="C")  # keeps 0-d
    dims = b"".join(_enc_varint(int(d)) for d in a.shape)
    out = bytearray()
    if a.ndim:
        out += _enc_len(1, dims)
    out += _enc_varint(2 << 3) + _enc_varint(dt)
    out += _enc_len(8, name.encode("utf-8"))
    out += _enc_len(9, a.tobytes())
    return bytes(out)


def _unpack(wt, val, fmt, size):
    if wt == 2:  # packed
        return list(struct.unpack("<%d%s" % (len(val) // size, fmt), val))
    return [struct.unpack("<" + fmt, val)[0]]


def decode_tensor(data):
    """(name, numpy array) from TensorProto bytes."""
    dims, dtype, name, raw = [], 1, "", None
    ints, floats, doubles = [], [], []
    for f, wt, v in _fields(data):
        if f == 1:
            if wt == 2:
                p = 0
                while p < len(v):
                    d, p = _varint(v, p)
                    dims.append(d)
            else:
                dims.append(v)
        elif f == 2 and wt == 0:
            dtype = v
        elif f == 8 and wt == 2:
            name = bytes(v).decode("utf-8", "replace")
        elif f == 9 and wt == 2:
            raw = bytes(v)
        elif f == 4:
            floats += _unpack(wt, v, "f", 4)
        elif f == 10:
            doubles += _unpack(wt, v, "d", 8)
        elif f in (5, 7, 11):
            if wt == 2:
                p = 0
                while p < len(v):
                    d, p = _varint(v, p)
                    ints.append(d)
            else:
                ints.append(v)
    np_t = ONNX_TO_NUMPY.get(dtype)
    if np_t is None:
        raise WireError("tensor '%s': unsupported data_type %d" % (name, dtype))
    dims = [d - (1 << 64) if d >= 1 << 63 else d for d in dims]
    if raw is not None:
        arr = np.frombuffer(raw, dtype=np.dtype(np_t).newbyteorder("<")).astype(np_t)
    elif floats or doubles:
        arr = np.array(floats or doubles, dtype=np_t)
    else:
        if dtype == 7:
            ints = [i - (1 << 64) if i >= 1 << 63 else i for i in ints]
        if dtype == 10:  # float16 bits in int32_data
            arr = np.array(ints, dtype=np.uint16).view(np.float16)
        else:
            arr = np.array(ints, dtype=np_t)
    count = int(np.prod(dims)) if dims else 1
    if arr.size != count:
        raise WireError("tensor '%s': %d elements for shape %s" % (name, arr.size, dims))
    return name, arr.reshape(dims)


def model_input_names(data):
    """The graph inputs of ModelProto bytes that are not initializers, in order."""
    graph = None
    for f, wt, v in _fields(data):
        if f == 7 and wt == 2:
            graph = v
    if graph is None:
        raise WireError("no graph")
    inputs, inits = [], set()
    for f, wt, v in _fields(graph):
        if wt != 2 or f not in (5, 11):
            continue
        want = 8 if f == 5 else 1
        for f2, wt2, v2 in _fields(v):
            if f2 == want and wt2 == 2:
                (inits.add if f == 5 else inputs.append)(bytes(v2).decode("utf-8", "replace"))
                break
    return [n for n in inputs if n not in inits]
