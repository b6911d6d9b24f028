-- wrk script: requests the paths of the file named by TILE_PATHS in turn.
local paths = {}
for line in io.lines(os.getenv("TILE_PATHS")) do
  if #line > 0 then paths[#paths + 1] = line end
end
local counter = 0
request = function()
  counter = counter % #paths + 1
  return wrk.format("GET", paths[counter])
end
