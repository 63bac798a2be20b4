//! Lane scoring: which transports carry traffic to a peer, a pure function of what each transport declares. (Being written for issue 5.)
