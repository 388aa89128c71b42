SetFactory("Built-in");
lc = 0.6;
Point(1) = {0,0,0,lc}; Point(2) = {1,0,0,lc}; Point(3) = {1,1,0,lc}; Point(4) = {0,1,0,lc};
Line(1) = {1,2}; Line(2) = {2,3}; Line(3) = {3,4}; Line(4) = {4,1};
Curve Loop(1) = {1,2,3,4}; Plane Surface(1) = {1};
Extrude {0,0,1} { Surface{1}; }
Physical Surface("bottom", 11) = {1};
Physical Surface("top", 12) = {26};
Physical Volume("solid", 21) = {1};
Physical Point("origin", 31) = {1};
