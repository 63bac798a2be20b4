//! Derived datatypes: type maps, extents, pack and unpack. (Being written for issue 4.)
