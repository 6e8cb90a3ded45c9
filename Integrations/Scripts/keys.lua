-- wrk script: GET <prefix><n> with n uniform in 1...keys. Arguments: prefix keys.
-- A fixed seed, so that every run asks for the same keys in the same order per thread.
local prefix, keys
init = function(args)
    prefix = args[1] or "/cachekit/"
    keys = tonumber(args[2] or "10000")
    math.randomseed(42)
end
request = function()
    return wrk.format("GET", prefix .. math.random(1, keys))
end
