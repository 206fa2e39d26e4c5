// placeholder until the JSON-RPC layer lands
