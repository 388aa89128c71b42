// Three points, two in a physical group, no mesh (gmsh -0): a geometry-only MSH file.
Point(1) = {0,0,0,1}; Point(2) = {1,0,0,1}; Point(3) = {0.5,0.5,0.25,1};
Physical Point("ends", 7) = {1,2};
